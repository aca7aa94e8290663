import type { Messages } from "../messages.js"

/** French. */
const messages: Messages = {
  tabPost: "Donnez votre avis",
  tabUpdates: "Nouveautés",
  tabs: "Avis",
  formTitle: "Dites-nous ce dont vous avez besoin",
  board: "Tableau",
  loadingBoards: "Chargement des tableaux…",
  noBoards: "Aucun tableau public pour l’instant.",
  boardsFailed: "Impossible de charger les tableaux.",
  retry: "Réessayer",
  title: "Titre",
  details: "Détails (facultatif)",
  submit: "Envoyer votre avis",
  sending: "Envoi en cours…",
  similar: { one: "Une publication similaire existe déjà", many: "{count} de publications similaires existent déjà", other: "{count} publications similaires existent déjà" },
  newTab: "(s’ouvre dans un nouvel onglet)",
  thanks: "Merci ! Votre avis « {title} » a été publié.",
  sendMore: "Envoyer un autre avis",
  pickBoard: "Choisissez un tableau.",
  titleRequired: "Veuillez donner un titre à votre avis.",
  fieldInvalid: "Veuillez vérifier ce champ.",
  loading: "Chargement…",
  nothingNew: "Rien de nouveau pour l’instant.",
  updatesFailed: "Impossible de charger les nouveautés.",
  unreachable: "Impossible de joindre le service de retours depuis cette page.",
  busy: { one: "Le service de retours est très sollicité. Veuillez réessayer dans {seconds} seconde.", many: "Le service de retours est très sollicité. Veuillez réessayer dans {seconds} de secondes.", other: "Le service de retours est très sollicité. Veuillez réessayer dans {seconds} secondes." },
  unauthorized: "Impossible de vérifier votre connexion. Rechargez la page et réessayez.",
  notFound: "Ce tableau n’existe plus. Rechargez la page et choisissez-en un autre.",
  checkForm: "Veuillez vérifier le formulaire.",
  failed: "Un problème est survenu de notre côté. Veuillez réessayer."
}
export default messages
